param start = 2016-02-30T00:00:00Z
