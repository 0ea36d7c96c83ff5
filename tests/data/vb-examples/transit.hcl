# The four transit tests with the key and request settings vault-benchmark's transit page
# lists (its defaults where this file is silent: rsa-2048 keys, PSS over SHA2-256).
vault_addr  = "http://127.0.0.1:8200"
vault_token = "root"
duration    = "5s"

test "transit_sign" "signs" {
  weight = 25
  config {
    keys {
      type = "ecdsa-p384"
    }
    sign {
      hash_algorithm       = "sha2-384"
      marshaling_algorithm = "jws"
    }
  }
}
test "transit_verify" "verifies" {
  weight = 25
  config {
    verify {
      signature_algorithm = "pkcs1v15"
      hash_algorithm      = "sha2-512"
    }
  }
}
test "transit_encrypt" "encrypts" {
  weight = 25
  config {
    payload_len = 64
    context_len = 16
    keys {
      type                  = "aes128-gcm96"
      derived               = true
      convergent_encryption = true
    }
  }
}
test "transit_decrypt" "decrypts" {
  weight = 25
  config {
    payload_len = 32
    keys {
      type       = "chacha20-poly1305"
      exportable = true
    }
  }
}
