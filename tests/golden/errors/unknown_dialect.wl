target db {
  dialect postgre
  pg "postgres://postgres@127.0.0.1:5432/postgres"
}
