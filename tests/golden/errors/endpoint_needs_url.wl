target db {
  pg
}
