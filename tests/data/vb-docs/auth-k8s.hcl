# The shape of vault-benchmark's kube_auth docs example (docs/tests/auth-k8s.md, the
# ConfigMap's k8s.hcl): its keys and values, vblast's layout.
vault_addr    = "http://vault:8200"
vault_token   = "root"
duration      = "10s"
report_mode   = "terse"
random_mounts = true
cleanup       = true

test "kube_auth" "kube_auth_test1" {
  weight = 100
  config {
    auth {
      kubernetes_host = "https://kubernetes.default.svc"
    }
    role {
      name                             = "vault-benchmark-role"
      bound_service_account_names      = ["vault-benchmark"]
      bound_service_account_namespaces = ["*"]
      token_ttl                        = "1h"
      token_max_ttl                    = "24h"
    }
  }
}
