# tests of the examples area
