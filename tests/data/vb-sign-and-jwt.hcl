# A vault-benchmark file with the test types whose operations make their own keys: PKI
# signing through an intermediate (root and intermediate CAs made at setup) and JWT logins.

vault_addr  = "http://127.0.0.1:8200"
vault_token = "root"
duration    = "30s"

test "pki_sign" "csr_signing" {
  weight = 50
  config {
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
      ttl      = "10s"
      no_store = true
      key_type = "ec"
      key_bits = "256"
    }
  }
}

test "jwt_auth" "jwt_logins" {
  weight = 50
  config {
    auth {
      bound_issuer = "https://idp.benchmark.test"
    }
    role {
      role_type       = "jwt"
      bound_subject   = "benchmark-service"
      bound_audiences = ["https://vault.plugin.auth.jwt.test", "second"]
      token_ttl       = "1m"
      token_type      = "batch"
    }
  }
}
