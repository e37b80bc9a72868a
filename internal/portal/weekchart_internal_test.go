package portal

import "testing"

func TestNewWeekChart(t *testing.T) {
	var grid [7][24]int
	grid[0][0] = 1  // Monday 00:00
	grid[2][9] = 8  // Wednesday 09:00, the busiest
	grid[6][23] = 5 // Sunday 23:00
	grid[4][17] = 2
	c := newWeekChart(grid)
	if c.Max != 8 || c.Total != 16 || len(c.Cells) != 7*24 || len(c.Rows) != 7 {
		t.Fatalf("max %d, total %d, %d cells, %d rows", c.Max, c.Total, len(c.Cells), len(c.Rows))
	}
	for _, tc := range []struct {
		day, hour, value, level int
	}{
		{0, 0, 1, 1}, // any call shows
		{2, 9, 8, 4},
		{6, 23, 5, 3}, // 5/8 of the busiest: the third of four shades
		{4, 17, 2, 1},
		{3, 12, 0, 0},
	} {
		cell := c.Cells[tc.day*24+tc.hour]
		if cell.Day != weekdays[tc.day] || cell.Hour != tc.hour || cell.Value != tc.value || cell.Level != tc.level {
			t.Errorf("cell %s %02d:00 = %+v; want %d calls at shade %d", weekdays[tc.day], tc.hour, cell, tc.value, tc.level)
		}
	}
	if c.Rows[2].Total != 8 || c.Rows[6].Counts[23] != 5 {
		t.Errorf("rows: Wednesday %d calls, Sunday 23:00 %d", c.Rows[2].Total, c.Rows[6].Counts[23])
	}
	last := c.Cells[len(c.Cells)-1]
	if right := last.X + last.W; right > float64(c.Width) || last.Y+last.H > float64(c.PlotHeight) {
		t.Errorf("the last cell ends at (%.1f, %.1f), outside %dx%d", right, last.Y+last.H, c.Width, c.PlotHeight)
	}
	if empty := newWeekChart([7][24]int{}); empty.Max != 0 || empty.Cells[0].Level != 0 {
		t.Errorf("an empty week: %+v", empty.Cells[0])
	}
}
