# The shape of vault-benchmark's kubernetes_secret docs example "Advanced Configuration
# with Labels, Annotations and Environment Variables" (docs/tests/secret-k8s.md): its keys
# and values.
test "kubernetes_secret" "k8s_advanced_test" {
  weight = 100
  config {
    kubernetes {
      kubernetes_host = "https://kubernetes.example.com"
    }
    role {
      name                          = "benchmark-advanced-role"
      kubernetes_role_name          = "app-access-role"
      kubernetes_role_type          = "Role"
      allowed_kubernetes_namespaces = ["production"]
      token_default_ttl             = "30m"
      token_max_ttl                 = "2h"
      name_template                 = "vault-{{.RoleName | lowercase}}-{{random 6 | lowercase}}"
      extra_labels = {
        "environment"   = "production"
        "vault.io/role" = "benchmark"
      }
      extra_annotations = {
        "app.kubernetes.io/created-by" = "vault"
        "vault.io/managed-by"          = "vault-benchmark"
      }
    }
  }
}
