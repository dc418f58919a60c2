// Importing a folder instead of a file.
import "support" as lib
