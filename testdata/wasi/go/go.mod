module wasiguests

go 1.26
