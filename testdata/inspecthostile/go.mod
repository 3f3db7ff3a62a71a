module subakoinspecthostile

go 1.26
