package score

import (
	"os"
	"strconv"
)

// temporary experiment switch
var xv, _ = strconv.Atoi(os.Getenv("XV"))
