// A refill needs a low end to refill at, within the clamp; hold's change is a probability.
schema d {
  series name: symbol = format("truck_%d", n) for n in 0..4
  field a: double = walk(1.0, uniform(-0.1, 0.0), refill = 1.0)
  field b: double = walk(1.0, uniform(-0.1, 0.0), clamp = 0..1, refill = 2.0)
  field c: double = hold(0.0, uniform(0, 10), 150%)
  timestamp t = every 10s from 2016-01-01T00:00:00Z for 1h
}
