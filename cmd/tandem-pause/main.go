// Command tandem-pause is the only process of a placeholder pod
// (reservationMode Pods): it holds no resources of its own, does nothing and
// exits 0 when the kubelet stops it (SIGTERM or SIGINT), as the pause
// container does. It is shipped as an image of its own next to
// tandem-scheduler's (hack/build-image.sh), so that the placeholder's image
// comes from the registry the installer pushes tandem to.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("tandem-pause: holding the room until SIGTERM")
	fmt.Println("tandem-pause: stopped by", <-stop)
}
