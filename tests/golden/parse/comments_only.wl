// Nothing but comments.
/* and a block */
