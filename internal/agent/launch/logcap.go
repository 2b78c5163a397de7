package launch

import (
	"fmt"
	"os"
	"time"
)

// A job writes its output into a pipe, never into its log file: the agent
// copies the pipe into the file up to Spec.LogLimit bytes, notes in the
// log where it stopped, and reads the rest to drop it, so that a job
// cannot fill the agent's disk and is not blocked (nor killed) for
// writing too much.

// drainWait bounds how long the end of an attempt waits for the copy to
// reach the end of the pipe: a process that escaped tracking may hold it
// open, and is cut off then.
const drainWait = 2 * time.Second

// logCopy copies a pipe's read end into the log file.
type logCopy struct {
	r       *os.File
	log     *os.File
	limit   int64 // bytes that may be written; 0: no limit, negative: none
	done    chan struct{}
	dropped int64 // bytes read past the limit, valid once done
}

// startLogCopy makes the pipe a job writes into and starts copying it to
// log. The caller hands w to the process and closes it once started.
func startLogCopy(log *os.File, limit int64) (w *os.File, c *logCopy, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	c = &logCopy{r: r, log: log, limit: limit, done: make(chan struct{})}
	go c.run()
	return w, c, nil
}

func (c *logCopy) run() {
	defer close(c.done)
	buf := make([]byte, 64<<10)
	var written int64
	lastNewline := true
	for {
		n, err := c.r.Read(buf)
		if n > 0 {
			keep := n
			if c.limit != 0 {
				keep = int(min(int64(n), max(c.limit-written, 0)))
			}
			if keep > 0 {
				_, _ = c.log.Write(buf[:keep])
				written += int64(keep)
				lastNewline = buf[keep-1] == '\n'
			}
			if keep < n {
				if c.dropped == 0 {
					c.note(lastNewline, "allot: this job's log reached its limit on this host; "+
						"the agent drops the rest of its output here (the job runs on)")
					lastNewline = true
				}
				c.dropped += int64(n - keep)
			}
		}
		if err != nil {
			break
		}
	}
	if c.dropped > 0 {
		c.note(lastNewline, fmt.Sprintf("allot: %d bytes of output dropped past the log limit", c.dropped))
	}
}

// note writes line to the log on a line of its own.
func (c *logCopy) note(atLineStart bool, line string) {
	if !atLineStart {
		line = "\n" + line
	}
	_, _ = c.log.WriteString(line + "\n")
}

// finish waits up to drainWait for the copy to reach the end of the pipe
// (every process that held its write end ended), then cuts it off, and
// closes the log.
func (c *logCopy) finish() {
	select {
	case <-c.done:
	case <-time.After(drainWait):
		// A process outside tracking still holds the pipe: reading ends
		// here, and its writes fail.
		_ = c.r.SetReadDeadline(time.Now())
		<-c.done
	}
	_ = c.r.Close()
	_ = c.log.Close()
}
