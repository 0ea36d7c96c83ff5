# A vault-benchmark PKI file in the shape of its stored EC P-256 example: a root and an
# intermediate named, certificates issued with EC P-256 keys.

vault_addr      = "http://127.0.0.1:8200"
vault_token     = "root"
vault_namespace = "root"
duration        = "30s"

test "pki_issue" "pki_issue" {
  weight = 100
  config {
    setup_delay = "2s"
    root_ca {
      common_name = "vblast.test Root Authority"
      key_type    = "ec"
      key_bits    = "256"
    }
    intermediate_csr {
      common_name = "vblast.test Intermediate Authority"
      key_type    = "ec"
      key_bits    = "256"
    }
    role {
      ttl            = "10s"
      no_store       = false
      generate_lease = false
      key_type       = "ec"
      key_bits       = "256"
    }
  }
}
