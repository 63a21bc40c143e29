# super-kernel sources (options, planner, ...)
