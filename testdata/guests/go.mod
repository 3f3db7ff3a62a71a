module subakoguests

go 1.26
