// A line comment.
/* A block comment
   spanning lines, with "quotes" and { braces } that do not count. */
param /* inline */ a = 1 // trailing
	param	b	=	2
/**/param c = /* between */ 3
// The last line has no newline.
param d = 4
