target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q { sql "SELECT ${seq()}" }
run r { against db.pg  queries q  count 1 }
