# vblast's own file in the shape of vault-benchmark's leased PKI examples: an EC P-384
# chain, certificates issued with P-384 keys, each with a lease.
vault_addr      = "http://127.0.0.1:8200"
vault_token     = "root"
vault_namespace = "root"
duration        = "5s"

test "pki_issue" "leased_p384" {
  weight = 100
  config {
    setup_delay = "1s"
    root_ca {
      common_name = "corpus.vblast Root CA"
      key_type    = "ec"
      key_bits    = "384"
    }
    intermediate_csr {
      common_name = "corpus.vblast Intermediate CA"
      key_type    = "ec"
      key_bits    = "384"
    }
    role {
      ttl            = "30s"
      no_store       = false
      generate_lease = true
      key_type       = "ec"
      key_bits       = "384"
    }
  }
}
