"""What both trust domains share: the wire, the peers, the value codec and the protocol's one table."""
