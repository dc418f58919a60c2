// `null one of` after a column's own `null`, and `late`.
schema s {
  field a: double = uniform(0.0, 1.0) null 1%
  null one of [a, b,] 10%
  late 19% by 12 rows
}
