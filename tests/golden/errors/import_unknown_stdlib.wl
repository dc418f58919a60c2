import "std/tsbs/cpu.wl" as tsbs
