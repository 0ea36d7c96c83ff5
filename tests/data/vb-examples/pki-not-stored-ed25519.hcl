# vblast's own file in the shape of vault-benchmark's not-stored PKI examples: an Ed25519
# chain and Ed25519 certificates the server does not keep.
vault_addr      = "http://127.0.0.1:8200"
vault_token     = "root"
vault_namespace = "root"
duration        = "5s"

test "pki_issue" "unstored_ed25519" {
  weight = 100
  config {
    setup_delay = "1s"
    root_ca {
      common_name = "corpus.vblast Ed25519 Root"
      key_type    = "ed25519"
    }
    intermediate_csr {
      common_name = "corpus.vblast Ed25519 Intermediate"
      key_type    = "ed25519"
    }
    role {
      ttl            = "20s"
      no_store       = true
      generate_lease = false
      key_type       = "ed25519"
    }
  }
}
