"""sem2mutex: audit and convert struct semaphore users of a Linux tree."""
