target db {
  qwp "wss://127.0.0.1:9000" { tls_cert "client.pem" }
}
