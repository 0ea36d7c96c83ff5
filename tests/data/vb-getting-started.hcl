# A vault-benchmark file in the shape of its getting-started tutorial: half AppRole
# logins, half KV v2 writes. vblast reads it as it is: `vblast --config FILE`.

vault_addr      = "http://127.0.0.1:8200"
vault_token     = "root"
vault_namespace = "root"
duration        = "30s"
cleanup         = true

test "approle_auth" "approle_logins" {
  weight = 50
  config {
    role {
      role_name = "benchmark-role"
      token_ttl = "2m"
    }
  }
}

test "kvv2_write" "static_secret_writes" {
  weight = 50
  config {
    numkvs = 100
    kvsize = 100
  }
}
