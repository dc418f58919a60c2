target db {
  dialect postgres
}
