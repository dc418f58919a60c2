target db {
  ilp_tcp "tcp://127.0.0.1"
}
