# The shape of vault-benchmark's kubernetes_secret docs example "Generated Role Rules"
# (docs/tests/secret-k8s.md): its keys and values, its placeholders included.
test "kubernetes_secret" "k8s_generated_test" {
  weight = 100
  config {
    kubernetes {
      kubernetes_host      = "https://kubernetes.example.com"
      kubernetes_ca_cert   = "-----BEGIN CERTIFICATE-----\nMIIC...\n-----END CERTIFICATE-----"
      service_account_jwt  = "eyJhbGciOiJSUzI1NiIsImtpZCI6..."
      disable_local_ca_jwt = true
    }
    role {
      name                          = "benchmark-generated-role"
      kubernetes_role_type          = "Role"
      allowed_kubernetes_namespaces = ["*"]
      token_default_ttl             = "1h"
      token_max_ttl                 = "8h"
      generated_role_rules          = <<RULES
rules:
- apiGroups: [""]
  resources: ["pods", "services"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list"]
RULES
    }
  }
}
