package x
