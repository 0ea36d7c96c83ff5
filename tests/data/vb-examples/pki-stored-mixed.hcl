# An RSA-2048 root over an EC P-521 intermediate, stored P-521 certificates (vault-benchmark's
# stored examples' keys, one file), and CSRs signed through the default chain.
vault_addr = "http://127.0.0.1:8200"
vault_token = "root"
duration = "5s"

test "pki_issue" "stored_p521" {
  weight = 60
  config {
    root_ca {
      common_name = "corpus.vblast RSA Root"
      key_type    = "rsa"
      key_bits    = "2048"
    }
    intermediate_csr {
      common_name = "corpus.vblast P-521 Intermediate"
      key_type    = "ec"
      key_bits    = "521"
    }
    role {
      ttl            = "15s"
      no_store       = false
      generate_lease = false
      key_type       = "ec"
      key_bits       = "521"
    }
  }
}

test "pki_sign" "csr_signs" {
  weight = 40
  config {
    role {
      ttl      = "1m"
      no_store = true
    }
  }
}
