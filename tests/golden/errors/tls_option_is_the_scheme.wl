target db {
  http "http://127.0.0.1:9000" { tls true }
}
