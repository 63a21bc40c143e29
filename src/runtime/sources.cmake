# sources of src/runtime (listed by its owner)
