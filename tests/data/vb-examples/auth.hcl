# The login tests of vault-benchmark's auth pages, each with the keys its page documents.
vault_addr  = "http://127.0.0.1:8200"
vault_token = "root"
duration    = "5s"

test "approle_auth" "approle_logins" {
  weight = 40
  config {
    role {
      role_name          = "corpus-role"
      token_ttl          = "1m"
      token_max_ttl      = "2m"
      token_type         = "batch"
      token_policies     = ["default"]
      secret_id_num_uses = 0
    }
    secret_id {
      ttl      = "5m"
      metadata = "{\"corpus\":\"yes\"}"
    }
  }
}

test "userpass_auth" "userpass_logins" {
  weight = 30
  config {
    username       = "corpus-user"
    password       = "not-a-real-secret"
    token_ttl      = "45s"
    token_num_uses = 3
    token_period   = "1m"
  }
}

test "jwt_auth" "jwt_logins" {
  weight = 30
  config {
    auth {
      bound_issuer = "https://issuer.corpus.vblast"
    }
    role {
      name            = "corpus-jwt"
      role_type       = "jwt"
      user_claim      = "sub"
      bound_subject   = "corpus-service"
      bound_audiences = ["corpus-audience"]
      token_ttl       = "1m"
    }
  }
}
