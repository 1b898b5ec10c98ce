package loadbench

// higgsRow is one row of the synthetic data set.
type higgsRow struct {
	F00   float32 `parquet:"f00"`
	F01   float32 `parquet:"f01"`
	F02   float32 `parquet:"f02"`
	F03   float32 `parquet:"f03"`
	F04   float32 `parquet:"f04"`
	F05   float32 `parquet:"f05"`
	F06   float32 `parquet:"f06"`
	F07   float32 `parquet:"f07"`
	F08   float32 `parquet:"f08"`
	F09   float32 `parquet:"f09"`
	F10   float32 `parquet:"f10"`
	F11   float32 `parquet:"f11"`
	F12   float32 `parquet:"f12"`
	F13   float32 `parquet:"f13"`
	F14   float32 `parquet:"f14"`
	F15   float32 `parquet:"f15"`
	F16   float32 `parquet:"f16"`
	F17   float32 `parquet:"f17"`
	F18   float32 `parquet:"f18"`
	F19   float32 `parquet:"f19"`
	F20   float32 `parquet:"f20"`
	F21   float32 `parquet:"f21"`
	F22   float32 `parquet:"f22"`
	F23   float32 `parquet:"f23"`
	F24   float32 `parquet:"f24"`
	F25   float32 `parquet:"f25"`
	F26   float32 `parquet:"f26"`
	F27   float32 `parquet:"f27"`
	Label float32 `parquet:"label"`
}
