workload nightly {
  seed 123
  description "nightly run: ${hosts} hosts"
}
workload empty {}
workload repeated { seed 1 seed 2 description "a" description "b" }
