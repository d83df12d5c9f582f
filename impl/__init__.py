"""Reference broker (issue 6): written independently of spec/; it never imports it."""
