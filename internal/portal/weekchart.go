package portal

import "fmt"

// weekdays name the rows of the hour-of-the-week chart, Monday first (store.CallsByWeekHour).
var weekdays = [7]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// Week chart geometry, in SVG user units: room on the left for the day names, a row per day,
// room below for the hours.
const (
	weekLabels    = 36
	weekRowHeight = 16
	weekLevels    = 4
)

// weekChart is the calls of each hour of each weekday laid out as a grid of shaded cells.
type weekChart struct {
	Width, Height, PlotHeight int
	Max, Total                int
	Cells                     []weekCell
	Rows                      []weekRow
	Hours                     []weekTick
}

// weekCell is one hour of one weekday: its box, its count and its shade (0 for none, up to
// weekLevels for the busiest).
type weekCell struct {
	X, Y, W, H float64
	Day        string
	Hour       int
	Value      int
	Level      int
}

// weekRow is a weekday's name, where it goes, and its 24 counts (for the numbers table).
type weekRow struct {
	Day    string
	Y      float64
	Counts [24]int
	Total  int
}

// weekTick labels an hour under the grid.
type weekTick struct {
	X    float64
	Text string
}

// newWeekChart lays grid (weekday, Monday first, by hour) out; each cell's shade is its share
// of the busiest cell in weekLevels steps, rounded up so that any call shows.
func newWeekChart(grid [7][24]int) weekChart {
	c := weekChart{Width: chartWidth, PlotHeight: 7 * weekRowHeight, Height: 7*weekRowHeight + chartAxis}
	for _, hours := range grid {
		for _, v := range hours {
			c.Max = max(c.Max, v)
			c.Total += v
		}
	}
	slot := float64(chartWidth-weekLabels) / 24
	for d, hours := range grid {
		y := float64(d * weekRowHeight)
		row := weekRow{Day: weekdays[d], Y: y + weekRowHeight*0.75, Counts: hours}
		for h, v := range hours {
			level := 0
			if v > 0 {
				level = (v*weekLevels + c.Max - 1) / c.Max
			}
			c.Cells = append(c.Cells, weekCell{X: weekLabels + float64(h)*slot + 0.5, Y: y + 0.5, W: slot - 1, H: weekRowHeight - 1,
				Day: weekdays[d], Hour: h, Value: v, Level: level})
			row.Total += v
		}
		c.Rows = append(c.Rows, row)
	}
	for h := 0; h < 24; h += 6 {
		c.Hours = append(c.Hours, weekTick{X: weekLabels + float64(h)*slot, Text: fmt.Sprintf("%02d", h)})
	}
	return c
}
