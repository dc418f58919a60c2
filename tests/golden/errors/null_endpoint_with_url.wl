target sink {
  null "tcp://127.0.0.1:9009"
}
