param hosts = 10
benchmark b {
  hosts hosts
}
