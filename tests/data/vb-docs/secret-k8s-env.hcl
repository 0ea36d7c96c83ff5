# The shape of vault-benchmark's kubernetes_secret docs example "Using Environment
# Variables" (docs/tests/secret-k8s.md): its keys and values.
test "kubernetes_secret" "k8s_env_test" {
  weight = 100
  config {
    kubernetes {
      kubernetes_host = "https://kubernetes.example.com"
    }
    role {
      name                          = "benchmark-env-role"
      service_account_name          = "vault-benchmark"
      allowed_kubernetes_namespaces = ["vault-system", "default"]
      token_default_audiences       = "https://kubernetes.default.svc.cluster.local"
      token_default_ttl             = "1h"
      token_max_ttl                 = "24h"
    }
  }
}
