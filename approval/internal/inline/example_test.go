package inline_test

import (
	"fmt"

	"github.com/runbox/runbox/approval/internal/inline"
)

func ExampleQuiet() {
	show := func(ok bool, why string) {
		if ok {
			fmt.Println("quiet")
			return
		}
		fmt.Println("not quiet:", why)
	}
	show(inline.Quiet(inline.Python, "import torch; print(torch.cuda.is_available())"))
	show(inline.Quiet(inline.Python, "import os as o; o.system('rm -rf build')"))
	show(inline.Quiet(inline.JavaScript, "const fs = require('fs'); fs.rmSync('x', {recursive: true})"))
	// Output:
	// quiet
	// not quiet: calls o.system
	// not quiet: changes files (fs.rmSync)
}
