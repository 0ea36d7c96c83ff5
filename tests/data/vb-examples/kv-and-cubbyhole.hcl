# KV v1 and v2 reads and writes of vault-benchmark's KV page, and its cubbyhole tests.
vault_addr  = "http://127.0.0.1:8200"
vault_token = "root"
duration    = "5s"

test "kvv1_read" "v1_reads" {
  weight = 20
  config {
    numkvs = 50
    kvsize = 16
  }
}
test "kvv1_write" "v1_writes" {
  weight = 15
  config {
    numkvs = 25
    kvsize = 64
  }
}
test "kvv2_read" "v2_reads" {
  weight = 20
  config {
    numkvs = 40
  }
}
test "kvv2_write" "v2_writes" {
  weight = 15
  mount_name = "corpus-kv"
  config {
    numkvs = 10
    kvsize = 256
  }
}
test "cubbyhole_read" "cubby_reads" {
  weight = 15
  config {
    path = "corpus-path"
  }
}
test "cubbyhole_write" "cubby_writes" {
  weight = 15
}
