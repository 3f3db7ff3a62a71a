module subakofuelguests

go 1.26
