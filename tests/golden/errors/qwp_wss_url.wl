// QWP over TLS is not built: the check refuses it instead of the run.
target questdb {
  qwp "wss://db.example:9000"
}
