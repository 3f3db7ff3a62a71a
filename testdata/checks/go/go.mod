module checkguests

go 1.26
