workload w {
  seed 1
  description "two seeds"
  seed 2
}
