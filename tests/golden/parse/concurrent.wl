// A concurrent group: members by name (a trailing comma is allowed), and the phase that ends it.
concurrent mixed {
  phases load, reads,
  until load
}

concurrent pair { phases a, b }
