param tick = 1.5ns
