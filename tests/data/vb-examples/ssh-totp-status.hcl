# ssh_sign with role, CA and key_signing keys; the three TOTP tests with a key's
# algorithm, digits and period; and the three status tests.
vault_addr  = "http://127.0.0.1:8200"
vault_token = "root"
duration    = "5s"

test "ssh_sign" "ssh_signs" {
  weight = 20
  config {
    ca {
      key_type = "ssh-ed25519"
    }
    role {
      name                    = "corpus-ssh"
      allow_user_certificates = true
      allow_user_key_ids      = true
      allowed_users           = "vblast,corpus"
      allowed_extensions      = "permit-pty,permit-port-forwarding"
      default_extensions      = { permit-pty = "" }
      ttl                     = "30m"
      max_ttl                 = "1h"
    }
    key_signing {
      ttl              = "10m"
      valid_principals = "corpus"
      cert_type        = "user"
      key_id           = "corpus-key"
      extensions       = { permit-port-forwarding = "" }
    }
  }
}
test "totp_generate" "totp_codes" {
  weight = 15
  config {
    key_name     = "corpus-key"
    issuer       = "Corpus"
    account_name = "corpus@vblast.test"
    algorithm    = "SHA512"
    digits       = 8
    period       = 45
  }
}
test "totp_read" "totp_keys" {
  weight = 15
  config {
    algorithm = "SHA256"
  }
}
test "totp_create" "totp_new_keys" {
  weight = 10
  config {
    issuer       = "Corpus"
    account_name = "new@vblast.test"
  }
}
test "ha_status" "ha" {
  weight = 15
}
test "seal_status" "seal" {
  weight = 15
}
test "metrics" "metrics" {
  weight = 10
}
