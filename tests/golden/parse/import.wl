// Imports: stdlib and relative paths, with and without arguments, trailing commas.
import "std/tsbs/cpu-only.wl" as tsbs
import "std/tsbs/cpu-only.wl" as small (hosts = 10)
import "lib/common.wl" as common (hosts = hosts * 2, start = 2016-01-01T00:00:00Z, end = start + 1h,)
import "empty-args.wl" as e ()
