module conformguest

go 1.26
