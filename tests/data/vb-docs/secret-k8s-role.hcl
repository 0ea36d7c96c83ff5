# The shape of vault-benchmark's kubernetes_secret docs example "Pre-existing Role"
# (docs/tests/secret-k8s.md): its keys and values, its placeholders included.
test "kubernetes_secret" "k8s_role_test" {
  weight = 100
  config {
    kubernetes {
      kubernetes_host      = "https://kubernetes.example.com"
      kubernetes_ca_cert   = "-----BEGIN CERTIFICATE-----\nMIIC...\n-----END CERTIFICATE-----"
      service_account_jwt  = "eyJhbGciOiJSUzI1NiIsImtpZCI6..."
      disable_local_ca_jwt = true
    }
    role {
      name                          = "benchmark-role-binding"
      kubernetes_role_name          = "vault-secrets-role"
      kubernetes_role_type          = "ClusterRole"
      allowed_kubernetes_namespaces = ["development", "staging"]
      token_default_ttl             = "30m"
      token_max_ttl                 = "4h"
    }
  }
}
