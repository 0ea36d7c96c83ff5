# The shape of vault-benchmark's kubernetes_secret docs example "Pre-existing Service
# Account" (docs/tests/secret-k8s.md): its keys and values, its placeholders included.
test "kubernetes_secret" "k8s_sa_test" {
  weight = 100
  config {
    kubernetes {
      kubernetes_host      = "https://kubernetes.example.com"
      kubernetes_ca_cert   = "-----BEGIN CERTIFICATE-----\nMIIC...\n-----END CERTIFICATE-----"
      service_account_jwt  = "eyJhbGciOiJSUzI1NiIsImtpZCI6..."
      disable_local_ca_jwt = true
    }
    role {
      name                          = "benchmark-sa-role"
      service_account_name          = "vault-test"
      allowed_kubernetes_namespaces = ["default"]
      token_default_ttl             = "1h"
      token_max_ttl                 = "24h"
    }
  }
}
